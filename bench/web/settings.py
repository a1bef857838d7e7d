"""Settings for the web benchmark only: production settings plus a floor view.

`python -m bench.web` starts gunicorn with DJANGO_SETTINGS_MODULE naming this
module; nothing else does, so the floor view (bench/web/urls.py) never exists
in a deployment. Everything else, the middleware stack included, is
microcloud/settings.py unchanged, so the floor costs what any request costs
before it reaches a view.
"""

from microcloud.settings import *  # noqa: F403

ROOT_URLCONF = "bench.web.urls"
