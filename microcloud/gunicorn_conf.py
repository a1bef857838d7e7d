"""gunicorn settings for microcloud: `gunicorn -c python:microcloud.gunicorn_conf`.

Its logger keeps live share tokens out of the access and error logs (only a
token's first characters, as in Django's own logs: microcloud.logfilters).
Everything else is left to the command line (bind, workers, threads).
"""

from gunicorn.glogging import Logger

from microcloud.logfilters import RedactShareTokens


class RedactingLogger(Logger):
    def setup(self, cfg):
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            log.addFilter(RedactShareTokens())


logger_class = RedactingLogger
