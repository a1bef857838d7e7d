"""`microcloud put --encrypt` against gunicorn whose file bytes live in a
bucket (moto's S3 server): no object of the bucket, nor its key or its
stored headers, holds any 64 bytes of the files in a row or their names, the
database holds neither names nor the note, and `get` brings them back.

The same on the local disk: tests/cli/test_client_encrypted.py."""

import pytest
from microcloud_cli import ece

from tests import buckets
from tests.cli.commands import microcloud, random_file, sha256
from tests.cli.test_client_encrypted import NAME, assert_the_database_never_holds, holds_a_run_of, put_encrypted

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_bucket_holds_only_ciphertext_and_the_database_no_name(bucket_storage, env, tmp_path, media_root):
    endpoint, bucket = bucket_storage
    first = tmp_path / NAME
    first.write_bytes(b"The minutes of the board, item 1: " + b"confidential. " * 20000)
    second = random_file(tmp_path / "scan-0001.bin", 1024 * 1024 + 11)
    plaintexts = [first.read_bytes(), second.read_bytes()]
    link, _, _, share = put_encrypted(env, first, second, options=("--message", "Read before Monday"))

    s3 = buckets.client(endpoint)
    objects = {key: s3.get_object(Bucket=bucket, Key=key) for key in buckets.keys(endpoint, bucket)}
    bodies = {key: answer["Body"].read() for key, answer in objects.items()}
    # The bucket holds the two bodies (what an upload left behind would be
    # here too), and the disk none of them.
    assert sorted(map(len, bodies.values())) == sorted(ece.encrypted_size(len(plain)) for plain in plaintexts)
    assert not [path for path in media_root.rglob("*") if path.is_file()]
    for key, body in bodies.items():
        for plain in plaintexts:
            assert not holds_a_run_of(plain, body), key
        stored_as = repr({name: value for name, value in objects[key].items() if name != "Body"})
        for text in (key, stored_as):
            assert NAME not in text
            assert "scan-0001" not in text
    assert_the_database_never_holds(NAME, "scan-0001.bin", "Read before Monday")

    out = tmp_path / "out"
    out.mkdir()
    done = microcloud(env, "get", "-q", link, "-d", str(out))
    assert done.stdout.split() == [str(out / NAME), str(out / "scan-0001.bin")]
    assert sha256(out / NAME) == sha256(first)
    assert sha256(out / "scan-0001.bin") == sha256(second)
    assert share.size == sum(map(len, bodies.values()))
