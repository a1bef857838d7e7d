"""Malware scanning with clamd: every file stored while CLAMD_URL is set
waits ("pending") until a scan worker has streamed its bytes to clamd and
recorded the verdict. The modules, lowest first:

    clamd        the clamd protocol (PING, INSTREAM) over a unix or TCP socket
    signals      what the scans tell whoever listens (notices, webhooks, collect)
    queue        claiming a waiting file, releasing it to a later try, and the
                 verdict recorded under the claim
    quarantine   an infected file: its shares ended, its bytes removed
    worker       one scan at a time (ScanWorker) and the thread that loops it
    rescans      queueing chosen files again, and scanning them with progress

docs/scanning.md says why it is built this way; the rule that a file not
cleared is not served is sharing.models.scans.
"""
