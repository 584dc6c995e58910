"""Settings of the course service: every value from the environment, with safe defaults.

PostgreSQL only: the job queue (procrastinate) lives in the same database as the
submissions, so a submission and its grading job commit in one transaction.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

from .env import env_bool, env_int, env_secret, env_text

BASE_DIR = Path(__file__).resolve().parent
REPO = BASE_DIR.parent

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_secret("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is not set (or SECRET_KEY_FILE); it is required unless DEBUG=True")
    SECRET_KEY = "debug-only-not-a-secret"

SITE_ROOT = env_text("SITE_ROOT", "http://127.0.0.1:8000").rstrip("/")
_site = urlsplit(SITE_ROOT)
ALLOWED_HOSTS = [_site.hostname or "127.0.0.1", "127.0.0.1", "localhost"]
CSRF_TRUSTED_ORIGINS = [f"{_site.scheme}://{_site.netloc}"]


def _database(url: str) -> dict[str, object]:
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfigured("DATABASE_URL must be a postgresql:// URL (the queue lives in PostgreSQL)")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")) or "grader",
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "127.0.0.1",
        "PORT": str(parts.port or 5432),
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,  # a restarted PostgreSQL is reconnected, not a 500 storm
        "OPTIONS": {"application_name": env_text("DB_APPLICATION_NAME", "grader-web")},
    }


DATABASES = {"default": _database(env_text("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/grader"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "procrastinate.contrib.django",
    "axes",
    "lti_tool",
    "service.accounts",
    "service.courses",
    "service.submissions",
    "service.api",
    "service.fleet",
    "service.lti",
]

MIDDLEWARE = [
    "service.body_limit.BodyLimitMiddleware",  # first: before the CSRF check reads the body
    "service.request_shape.RequestShapeMiddleware",  # no NUL or broken UTF-8 reaches a view or a query
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "lti_tool.middleware.LtiLaunchMiddleware",
    "axes.middleware.AxesMiddleware",  # turns a locked-out sign-in into the lockout page
    "service.api.errors.ApiErrorMiddleware",  # innermost: sees every API error, Django's 404 and 405 too
]

ROOT_URLCONF = "service.urls"
WSGI_APPLICATION = "service.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

# Launch state and rate limits must be shared by every web process: the database cache.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "service_cache"}}

AUTH_PASSWORD_VALIDATORS = [{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}]
LOGIN_URL = "/accounts/login/"
# Password sign-in throttling (django-axes, service/accounts/throttle.py): an account locks after
# LOGIN_FAILURES_PER_ACCOUNT failures, an address (a lab room behind a NAT shares one) after
# LOGIN_FAILURES_PER_ADDRESS, each for LOGIN_COOLOFF_SECONDS after its latest counted failure.
LOGIN_FAILURES_PER_ACCOUNT = env_int("LOGIN_FAILURES_PER_ACCOUNT", 10, minimum=1)
LOGIN_FAILURES_PER_ADDRESS = env_int("LOGIN_FAILURES_PER_ADDRESS", 30, minimum=1)
LOGIN_COOLOFF_SECONDS = env_int("LOGIN_COOLOFF_SECONDS", 900, minimum=1)
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # refuses a locked-out sign-in before any password check
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "service.accounts.throttle.SignInThrottle"
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locks
AXES_FAILURE_LIMIT = LOGIN_FAILURES_PER_ACCOUNT  # the handler scales the address's count to it
AXES_COOLOFF_TIME = "service.accounts.throttle.cool_off"
AXES_CLIENT_IP_CALLABLE = "service.accounts.throttle.axes_address"
AXES_USERNAME_CALLABLE = "service.accounts.throttle.axes_username"
AXES_LOCKOUT_CALLABLE = "service.accounts.lockout.lockout_response"
AXES_RESET_ON_SUCCESS = True  # only the account's failures from that address (the handler)
# A refused attempt while locked is not counted: the time the lockout page gives holds.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_DISABLE_ACCESS_LOG = True  # no row per successful sign-in
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en"
TIME_ZONE = env_text("TIME_ZONE", "UTC")
USE_TZ = True
STATIC_URL = "/static/"
WHITENOISE_USE_FINDERS = True  # a few small files, served from the apps' folders: no collectstatic step
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # The grader's feedback stylesheet, the base of every page's look: one file, one source.
    "service.shared_style.GraderStyleFinder",
]

# Uploads: the grader's own cap, and nothing kept in memory beyond it.
MAX_UPLOAD_BYTES = env_int("MAX_UPLOAD_BYTES", 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_UPLOAD_BYTES + 64 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = MAX_UPLOAD_BYTES + 64 * 1024

# The grading queue.
QUEUE_LIMIT = env_int("QUEUE_LIMIT", 2000, minimum=1)  # self-checks refused (503) beyond this many waiting jobs
SELF_CHECKS_PER_WINDOW = env_int("SELF_CHECKS_PER_WINDOW", 10, minimum=1)
# Counted submissions per student and assignment (generous: a limit against floods, not a policy).
SUBMITS_PER_WINDOW = env_int("SUBMITS_PER_WINDOW", 30, minimum=1)
SELF_CHECK_WINDOW_SECONDS = env_int("SELF_CHECK_WINDOW_SECONDS", 600, minimum=1)
GRADER_SANDBOX = env_text("GRADER_SANDBOX", "docker")  # docker, or local for trusted demos only
# Sandboxes each worker keeps started ahead of demand (each used once; self-checks first).
# Unset: one per slot (--concurrency); 0: none. Idle ones are removed after WARM_IDLE_SECONDS.
WARM_SANDBOXES = env_int("WARM_SANDBOXES", -1, minimum=-1)
WARM_IDLE_SECONDS = env_int("WARM_IDLE_SECONDS", 600, minimum=10)
# A worker silent this long is taken for dead and its jobs run again. Workers heartbeat every
# 10 s, so anything much shorter would run live workers' jobs twice.
# Prometheus scrapes /metrics with "Authorization: Bearer <token>"; unset, /metrics is 404.
METRICS_TOKEN = env_text("METRICS_TOKEN")
STALLED_WORKER_SECONDS = env_int("STALLED_WORKER_SECONDS", 60, minimum=30)

# Security headers. The grader's feedback page has one inline <style> and no script; pages
# of the service load their one script and stylesheet from 'self'.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = not DEBUG and SITE_ROOT.startswith("https://")
# An LMS shows the tool in an iframe, a third-party context: browsers send the session and CSRF
# cookies there only when they are SameSite=None, which they accept only on Secure cookies. Over
# http (development, tests) the cookies stay Lax: a launch then works in a new window, not a frame.
# The CSRF token still guards every form; SameSite was never the only defence.
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "None" if SESSION_COOKIE_SECURE else "Lax"
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# Behind the TLS proxy of the deployment guide the web process hears plain HTTP; the proxy's
# X-Forwarded-Proto says what the browser used (the proxy must set it, overwriting any a
# client sent), so is_secure() is right, redirects do not loop and LTI's cookies are secure.
BEHIND_TLS_PROXY = SITE_ROOT.startswith("https://") and env_bool("BEHIND_TLS_PROXY", True)
if BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Proxies in front of the web process, each appending the address it heard from to
# X-Forwarded-For: the client's address is that many entries from the right
# (service/accounts/client.py). 0: REMOTE_ADDR is the client.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 1 if BEHIND_TLS_PROXY else 0)
# Served over https, browsers are told to keep to it (a year, the usual figure); 0 turns it off.
SECURE_HSTS_SECONDS = env_int(
    "SECURE_HSTS_SECONDS", 365 * 24 * 3600 if SITE_ROOT.startswith("https://") and not DEBUG else 0, minimum=0
)
# A sign-in lasts a working day, not Django's two weeks: lab machines are shared. LTI launches
# sign in again at each launch, so the LMS's own session decides for them.
SESSION_COOKIE_AGE = env_int("SESSION_HOURS", 12, minimum=1) * 3600
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_text("LOG_LEVEL", "INFO")},
    # axes: a warning per failed sign-in and lockout; its INFO lines repeat on every request.
    "loggers": {"procrastinate": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}

# --- LTI 1.3 (service/lti) ---------------------------------------------------------------------
# pylti1p3 keeps every launch's nonce, state and claims in the default cache for a day, and the
# launch view records spent nonces there as long (replays are refused by them). Django's cache
# culls a third of its rows once it holds MAX_ENTRIES (300 by default): launches in flight in any
# real class would fail, and spent nonces would be forgotten. Expired rows still go first.
# (Folded into the CACHES definition above, the type: ignore goes: CACHES is inferred str-valued.)
CACHE_MAX_ENTRIES = env_int("CACHE_MAX_ENTRIES", 200_000, minimum=10_000)
CACHES["default"]["OPTIONS"] = {"MAX_ENTRIES": CACHE_MAX_ENTRIES}  # type: ignore[assignment]
# Anonymous logins (service/lti/login_limits.py): a rate per client address, minutes of state
# each, and a bound on live entries far below the cull (expired ones are purged every minute),
# so that Django never culls a launch in progress to make room.
LTI_LOGINS_PER_MINUTE = env_int("LTI_LOGINS_PER_MINUTE", 30, minimum=1)
LTI_LOGIN_STATE_SECONDS = env_int("LTI_LOGIN_STATE_SECONDS", 600, minimum=60)
LTI_STATE_MAX = env_int("LTI_STATE_MAX", 20_000, minimum=100)
if LTI_STATE_MAX * 4 > CACHE_MAX_ENTRIES:
    raise ImproperlyConfigured("LTI_STATE_MAX must be at most a quarter of CACHE_MAX_ENTRIES")
# Grades to the LMS (service/lti/ags.py) and the roster from it (nrps.py): every call to a
# platform's token, AGS or NRPS endpoint gives up after this many seconds (connecting, waiting,
# reading); a gradebook answer is read up to LTI_SERVICE_MAX_BYTES, a roster page up to
# LTI_ROSTER_PAGE_BYTES; a sync reads a bounded number of pages, and launches ask for a sync of
# their course at most once per LTI_ROSTER_EVERY_MINUTES.
LTI_SERVICE_TIMEOUT_SECONDS = env_int("LTI_SERVICE_TIMEOUT_SECONDS", 15, minimum=1)
LTI_SERVICE_MAX_BYTES = env_int("LTI_SERVICE_MAX_BYTES", 1024 * 1024, minimum=16 * 1024)
LTI_ROSTER_MAX_PAGES = env_int("LTI_ROSTER_MAX_PAGES", 50, minimum=1)
LTI_ROSTER_PAGE_BYTES = env_int("LTI_ROSTER_PAGE_BYTES", 4 * 1024 * 1024, minimum=1024)
LTI_ROSTER_EVERY_MINUTES = env_int("LTI_ROSTER_EVERY_MINUTES", 60, minimum=1)
# Where the tool sends its token and students' data (service/lti/platform_urls.py): a
# registration's own origins (issuer, auth and token URLs), and the hosts named here, comma
# separated, ``host`` or ``host:port`` (https): Canvas serves line items and memberships from
# each school's own domain, not from canvas.instructure.com.
LTI_SERVICE_HOSTS = tuple(host.strip().lower() for host in env_text("LTI_SERVICE_HOSTS").split(",") if host.strip())
for _entry in LTI_SERVICE_HOSTS:
    if not re.fullmatch(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:[0-9]{1,5})?", _entry):
        raise ImproperlyConfigured(f"LTI_SERVICE_HOSTS: {_entry[:100]!r} is not a host name or host:port")
# Plain http to a platform (dynamic registration, grades, rosters, deep linking answers) is for
# a development LMS and the tests only; an https registration is never answered over http.
LTI_ALLOW_HTTP = env_bool("LTI_ALLOW_HTTP", DEBUG)
