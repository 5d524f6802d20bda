"""Horizon's local settings for the idnode test (tests/it/horizon.rs), as an operator writes
them: Horizon's own settings module (openstack_dashboard.settings) imports this file as
`local.local_settings`, found through PYTHONPATH=tests/it/horizon.

Everything that differs between runs comes from the environment the test gives Horizon:
  IDNODE_HORIZON_KEYSTONE_URL  the /v3 URL of the idnode member Horizon talks to;
  IDNODE_HORIZON_RUN_DIR       a directory of this run (session database, cache, secret);
  IDNODE_HORIZON_STATIC_ROOT   the collected and compressed static files
                               (scripts/install-test-deps builds them once, offline).
The same file, with no keystone URL, is what `collectstatic` and `compress` run with at install
time: the offline compression manifest only matches templates rendered with these settings.
"""
import os

_RUN_DIR = os.environ.get("IDNODE_HORIZON_RUN_DIR", "/tmp/idnode-horizon")

# The development server serves the static files only with DEBUG (django.contrib.staticfiles).
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
SECRET_KEY = os.environ.get("IDNODE_HORIZON_SECRET_KEY", "idnode-horizon-test-only")
TIME_ZONE = "UTC"

# Identity only: idnode is the Keystone; no other OpenStack service exists.
OPENSTACK_KEYSTONE_URL = os.environ.get("IDNODE_HORIZON_KEYSTONE_URL", "http://127.0.0.1:5000/v3")
OPENSTACK_API_VERSIONS = {"identity": 3}
OPENSTACK_KEYSTONE_MULTIDOMAIN_SUPPORT = False
OPENSTACK_KEYSTONE_DEFAULT_DOMAIN = "Default"
OPENSTACK_KEYSTONE_DEFAULT_ROLE = "member"
OPENSTACK_ENDPOINT_TYPE = "publicURL"
WEBSSO_ENABLED = False
OPENSTACK_SSL_NO_VERIFY = False

# Sessions in a SQLite database of the run, a file cache: no memcached.
SESSION_ENGINE = "django.contrib.sessions.backends.db"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.path.join(_RUN_DIR, "horizon.sqlite3"),
    }
}
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": os.path.join(_RUN_DIR, "cache"),
    }
}

# Static files collected and compressed ahead of time (`collectstatic`, `compress --force`).
STATIC_ROOT = os.environ.get("IDNODE_HORIZON_STATIC_ROOT", "/opt/anchors/horizon-static")
COMPRESS_OFFLINE = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"console": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"level": "INFO", "class": "logging.StreamHandler", "formatter": "console"}},
    "root": {"handlers": ["console"], "level": "INFO"},
}
