"""The store on any filesystem pyarrow supports: a local folder, or `s3://bucket/prefix` (gs://, hdfs://).

`open_store(url, options)` gives a local `Path` for a plain path (everything
works as it always did) and a `StorePath` for a URL: a small pathlib-like
value over a `Store` (a pyarrow filesystem and a base path in it), so the
layout, the writers, the readers and the ledger take either.

On an object store:
- a file is written whole (one PUT, or a multipart upload that becomes visible
  only when complete): `write_atomic` writes a local temp file, then uploads it;
  an attempt still counts only when its manifest, written last, says ok;
- credentials come from the environment and the AWS config files as pyarrow
  reads them (AWS_ACCESS_KEY_ID, AWS_PROFILE, ...); `paths.store_options`
  holds only where and how to connect (endpoint_override, region, scheme, ...)
  and refuses credential keys, so none is ever written to the store or a log;
- a StorePath pickles as its URL and options, so a Ray worker rebuilds the
  filesystem on its own node from its own environment and writes straight to
  the store.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pyarrow.fs as pafs

from store.errors import StoreError

# Object reads tried this many times when one fails midway (Store.read_bytes), READ_RETRY_S x n apart.
READ_ATTEMPTS = 3
READ_RETRY_S = 0.2
# Keys of paths.store_options that would put a secret into the config (and so the session record).
SECRET_OPTIONS = ("access_key", "secret_key", "session_token")
# Words that make a store option or a URL query key a secret (access_key, secret_key,
# session_token, X-Amz-Signature, password, ...): such a value is refused and never printed.
SECRET_WORDS = ("secret", "token", "password", "passwd", "key", "credential", "signature")
# Schemes whose bucket names hold no ':' or '@': there, `scheme://word:...@` is always an access key
# and its secret, refused even where the secret holds a '/' (AWS secrets do), which splits the URL
# where urlsplit would look for the host; other schemes are refused on urlsplit's password.
_BUCKET_SCHEMES = ("s3", "s3a", "s3n", "gs", "gcs")
# User info, for redaction: `word:anything@` after any scheme (a '/' in a password is a typing
# mistake elsewhere, but its secret is still one), or `user@` before the first '/'.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?:[^/\s@:'\"]*:[^\s@'\"]*|[^/\s@'\"?#]+)@")
_QUERY_ITEM = re.compile(r"(?P<sep>[?&;])(?P<key>[^=&;#\s'\"]+)=(?P<value>[^&;#\s'\"]*)")
_OPTION_ITEM = re.compile(r"(?P<key>store_options\.[\w-]+)=(?P<value>[^\s'\"]*)")
# S3FileSystem options that arrive from the config as strings.
_S3_INT_OPTIONS = ("connect_timeout", "request_timeout")
_S3_BOOL_OPTIONS = ("allow_bucket_creation", "background_writes", "force_virtual_addressing")


class StoreUnreachable(OSError):
    """An object store that did not answer, or refused: one line naming the store and its endpoint.

    An OSError, so every caller that copes with a failed read or write copes with this one too;
    the command line prints it as its one `error:` line (grid/__main__.py).
    """


def aws_reason(exc: BaseException) -> str:
    """pyarrow's S3 message, cut to what says why: `AWS Error NETWORK_CONNECTION during ListObjectsV2
    operation: curlCode: 7, Could not connect to server` (no key, no `Details:` repeat), one line."""
    text = " ".join(str(exc).split())
    if "AWS Error" in text:
        text = "AWS Error" + text.split("AWS Error", 1)[1]
    text = text.split("; Details:", 1)[0]
    return redact(text[:240])


def is_secret_key(name: str) -> bool:
    """Whether a store option or URL query key names a credential (by SECRET_WORDS)."""
    lowered = name.lower()
    return lowered in SECRET_OPTIONS or any(word in lowered for word in SECRET_WORDS)


def redact(text: str) -> str:
    """`text` with every URL's user info and every secret-looking query or option value as `***`.

    The one redaction every message and log that shows a store goes through (StorePath's str,
    StoreError, grid's `error:` line): `s3://AKIA:abc/def@bucket/x?secret_key=s` reads
    `s3://***@bucket/x?secret_key=***`. Over-redacting a URL whose path merely holds '@' after a
    port (`hdfs://host:8020/a@b`) is the safe side.
    """

    def query(match: re.Match[str]) -> str:
        if not is_secret_key(match["key"]):
            return match[0]
        return f"{match['sep']}{match['key']}=***"

    def option(match: re.Match[str]) -> str:
        return f"{match['key']}=***" if is_secret_key(match["key"].split(".", 1)[1]) else match[0]

    text = _USERINFO.sub(lambda m: f"{m['scheme']}***@", text)
    return _OPTION_ITEM.sub(option, _QUERY_ITEM.sub(query, text))


def url_secret_problem(
    url: str, options: Mapping[str, Any] | None = None, key: str = "paths.store"
) -> str | None:
    """Why `url` and `options` would put a credential into the config, or None; never echoes one.

    The store URL and its options are written to the session record and shown in messages, so
    user info (`s3://KEY:SECRET@bucket`), a secret in the query (`?secret_key=...`), a secret
    option and an option whose value is such a URL (`endpoint_override=http://KEY:SECRET@host`) are
    refused; credentials come from each node's environment instead. `key` names the setting
    `url` came from (paths.store, paths.data_dir).
    """
    where = (
        "credentials come from the environment (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
        "an instance role), never the config"
    )
    if secret := sorted(k for k in options or {} if is_secret_key(str(k))):
        return f"paths.store_options may not hold {', '.join(secret)}: {where}"
    for name, value in sorted((options or {}).items()):
        if not isinstance(value, str):
            continue
        # endpoint_override may leave out its scheme (`KEY:SECRET@host:9000`): read such a value as
        # http:// so that user info in it is found (Store.endpoint() would print it otherwise).
        url = value if "://" in value else f"http://{value}"
        if (problem := url_credentials(url, f"paths.store_options.{name}", where)) is not None:
            return problem
    return url_credentials(url, key, where) if is_url(url) else None


def url_credentials(url: str, key: str, where: str) -> str | None:
    """Why the URL of setting `key` holds credentials (user info, a secret in its query), or None."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    userinfo = _USERINFO.match(url) is not None if scheme in _BUCKET_SCHEMES else parts.password is not None
    if userinfo:
        return (
            f"{key} {redact(url)} holds credentials before its '@'; give the URL without them "
            f"(e.g. {scheme}://{'bucket/prefix' if scheme in _BUCKET_SCHEMES else 'host:port'}): {where}"
        )
    if secret := sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True) if is_secret_key(k)}):
        named = ", ".join(secret)
        return f"{key} {redact(url)} holds {named} in its query; give the URL without it: {where}"
    return None


def is_url(value: str | os.PathLike[str]) -> bool:
    """Whether a configured store is a URL (scheme://...) rather than a local path; file:// is local."""
    text = str(value)
    scheme = urlsplit(text).scheme if "://" in text else ""
    return bool(scheme) and scheme != "file"


def _s3_filesystem(options: Mapping[str, Any]) -> pafs.FileSystem:
    kwargs: dict[str, Any] = {}
    for key, value in options.items():
        if key in _S3_INT_OPTIONS:
            kwargs[key] = float(value)
        elif key in _S3_BOOL_OPTIONS:
            kwargs[key] = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")
        else:
            kwargs[key] = value
    env_endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    kwargs.setdefault("endpoint_override", env_endpoint)
    if kwargs["endpoint_override"] is None:
        del kwargs["endpoint_override"]
    else:
        # pyarrow wants host:port and the scheme apart.
        endpoint = str(kwargs["endpoint_override"])
        if "://" in endpoint:
            scheme, _, rest = endpoint.partition("://")
            kwargs["endpoint_override"] = rest.rstrip("/")
            kwargs.setdefault("scheme", scheme)
    return pafs.S3FileSystem(**kwargs)


def make_filesystem(
    url: str, options: Mapping[str, Any] | None = None, key: str = "paths.store"
) -> tuple[pafs.FileSystem, str]:
    """pyarrow's filesystem for `url` and the base path in it; `options` configure S3 (never credentials).
    `key` names the setting `url` came from in a message (paths.store, `stores[0]` of grid compare)."""
    options = dict(options or {})
    if (secret := url_secret_problem(url, options, key)) is not None:
        raise StoreError(secret)
    parts = urlsplit(url)
    if parts.scheme == "s3":
        base = (parts.netloc + parts.path).rstrip("/")
        if not parts.netloc:
            raise StoreError(f"{key} {redact(url)}: no bucket (s3://bucket/prefix)")
        return _s3_filesystem(options), base
    if options:
        raise StoreError(f"paths.store_options apply to s3:// stores only, not {parts.scheme}://")
    try:
        filesystem, base = pafs.FileSystem.from_uri(url)
    except (ValueError, OSError) as exc:
        # pyarrow's message may quote the URL whole.
        raise StoreError(redact(f"{key} {url}: {exc}")) from exc
    return filesystem, base.rstrip("/")


@dataclass(frozen=True)
class StoreStat:
    """What `StorePath.stat` gives: the fields of os.stat_result the harness reads."""

    st_size: int
    st_mtime_ns: int

    @property
    def st_mtime(self) -> float:
        return self.st_mtime_ns / 1e9

    @property
    def st_ctime_ns(self) -> int:
        return self.st_mtime_ns

    @property
    def st_ino(self) -> int:
        return 0


@dataclass(frozen=True)
class Store:
    """A pyarrow filesystem and the store's base path in it (e.g. S3: `bucket/prefix`)."""

    url: str
    options: tuple[tuple[str, Any], ...] = ()
    fs: pafs.FileSystem = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    base: str = ""

    @classmethod
    def open(cls, url: str, options: Mapping[str, Any] | None = None, key: str = "paths.store") -> Store:
        filesystem, base = make_filesystem(url, options, key)
        return cls(url.rstrip("/"), tuple(sorted((options or {}).items())), filesystem, base)

    def __reduce__(self) -> tuple[Any, ...]:
        # The URL and options only: the worker builds its own filesystem (and credentials) on its node.
        return (Store.open, (self.url, dict(self.options)))

    def __repr__(self) -> str:
        # Options are left out: only where the store is belongs in a message.
        return f"Store({redact(self.url)!r})"

    def full(self, key: str) -> str:
        return f"{self.base}/{key}" if key else self.base

    def endpoint(self) -> str:
        """Where the store's requests go, for a message: the endpoint given, else the service's own."""
        options = dict(self.options)
        given = options.get("endpoint_override") or os.environ.get("AWS_ENDPOINT_URL_S3")
        given = given or os.environ.get("AWS_ENDPOINT_URL")
        if given:
            text = str(given)
            if "://" not in text and options.get("scheme"):
                text = f"{options['scheme']}://{text}"
            if "://" not in text and "@" in text:  # user info with no scheme: redact() looks for one
                text = "***@" + text.rsplit("@", 1)[1]
            return redact(text)
        scheme = urlsplit(self.url).scheme
        if scheme == "s3":
            region = options.get("region") or os.environ.get("AWS_REGION")
            region = region or os.environ.get("AWS_DEFAULT_REGION")
            return f"AWS S3{f' ({region})' if region else ''}"
        return f"{scheme}://"

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """A failed call of the store (not a missing object) as StoreUnreachable: one line that names
        the store and its endpoint, what the store said, and where to look."""
        try:
            yield
        except (FileNotFoundError, StoreUnreachable):
            raise
        except OSError as exc:
            raise StoreUnreachable(
                f"store {redact(self.url)} at {self.endpoint()} did not answer or refused "
                f"({aws_reason(exc)}); check that the endpoint is up and reachable "
                "(paths.store_options.endpoint_override, AWS_ENDPOINT_URL), that the bucket exists and "
                "that the credentials in the environment may use it"
            ) from exc

    def info(self, key: str) -> pafs.FileInfo:
        with self.answering():
            return self.fs.get_file_info(self.full(key))

    def exists(self, key: str) -> bool:
        return self.info(key).type != pafs.FileType.NotFound

    def absence(self) -> str | None:
        """Why this store holds nothing to read, in words ('its bucket 'b' does not exist', 'no object
        lies under it'), or None when something does. Object stores have no folders: a prefix that
        holds nothing is a store that does not exist (a mistyped URL read as an empty store would say
        "0 cells", and `grid report` would write an empty page into it)."""
        if self.info("").type != pafs.FileType.NotFound:  # pyarrow: a prefix with objects is a Directory
            return None
        selector = pafs.FileSelector(self.base, recursive=False, allow_not_found=True)
        with self.answering():
            if self.fs.get_file_info(selector):  # one listing of the first level, never the whole store
                return None
        bucket = self.base.split("/", 1)[0]
        if urlsplit(self.url).scheme in _BUCKET_SCHEMES and bucket:
            with self.answering():
                if self.fs.get_file_info(bucket).type == pafs.FileType.NotFound:
                    return f"its bucket '{bucket}' does not exist at {self.endpoint()}"
        return "no object lies under it"

    def read_bytes(self, key: str) -> bytes:
        """The object's bytes; a read that fails midway is tried again (READ_ATTEMPTS in all).

        The SDK's own retries end with the response headers: an error while the body streams
        ("AWS Error INTERNAL_FAILURE during GetObject operation: Failed to flush response stream",
        seen in CI with four drivers racing for one lease) reached the caller and ended its thread.
        A read has no side effect, so trying it again is safe; a missing object is not retried.
        """
        for attempt in range(1, READ_ATTEMPTS + 1):
            try:
                with self.answering(), self.fs.open_input_stream(self.full(key)) as stream:
                    return stream.read()
            except FileNotFoundError:
                raise
            except OSError:
                if attempt == READ_ATTEMPTS:
                    raise
                time.sleep(READ_RETRY_S * attempt)
        raise AssertionError("unreachable")

    def write_bytes_atomic(self, key: str, data: bytes) -> None:
        """One object, visible only whole (object stores: one PUT)."""
        with self.answering(), self.fs.open_output_stream(self.full(key)) as stream:
            stream.write(data)

    def put_file(self, local: Path, key: str) -> None:
        """Upload a local file whole (a multipart upload is visible only once complete)."""
        target = self.full(key)
        with local.open("rb") as source, self.answering(), self.fs.open_output_stream(target) as stream:
            while chunk := source.read(8 * 2**20):
                stream.write(chunk)

    def list(self, key: str = "", recursive: bool = True) -> list[tuple[str, pafs.FileInfo]]:
        """(key relative to the store, info) of every file under `key`; none if it does not exist."""
        selector = pafs.FileSelector(self.full(key), recursive=recursive, allow_not_found=True)
        prefix = self.base + "/" if self.base else ""
        with self.answering():
            infos = self.fs.get_file_info(selector)
        return [(info.path.removeprefix(prefix), info) for info in infos if info.type == pafs.FileType.File]

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError), self.answering():
            self.fs.delete_file(self.full(key))


@dataclass(frozen=True)
class StorePath:
    """A file or folder of a Store, with the pathlib methods the harness uses.

    Deliberately no __fspath__: code that would open it as a local file fails loudly.
    """

    store: Store
    key: str = ""

    # -- names ---------------------------------------------------------------
    def __truediv__(self, other: str | os.PathLike[str]) -> StorePath:
        part = str(other).strip("/")
        return StorePath(self.store, f"{self.key}/{part}" if self.key else part)

    def __str__(self) -> str:
        # What every message and log shows of a remote store (store/space.py, grid/checks/preflight.py, run's
        # "-> <store>" line): redacted, should a URL with credentials ever get this far.
        text = f"{self.store.url}/{self.key}" if self.key else self.store.url
        return redact(text)

    def __lt__(self, other: StorePath) -> bool:
        return str(self) < str(other)

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def suffix(self) -> str:
        name = self.name
        return name[name.rfind(".") :] if "." in name.lstrip(".") else ""

    @property
    def stem(self) -> str:
        return self.name[: len(self.name) - len(self.suffix)] if self.suffix else self.name

    @property
    def parent(self) -> StorePath:
        return StorePath(self.store, self.key.rsplit("/", 1)[0] if "/" in self.key else "")

    def with_suffix(self, suffix: str) -> StorePath:
        return self.parent / (self.stem + suffix)

    # -- queries -------------------------------------------------------------
    def stat(self) -> StoreStat:
        info = self.store.info(self.key)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(str(self))
        return StoreStat(info.size or 0, info.mtime_ns or 0)

    def exists(self) -> bool:
        return self.store.exists(self.key)

    def is_file(self) -> bool:
        return self.store.info(self.key).type == pafs.FileType.File

    def is_dir(self) -> bool:
        # Object stores have no folders: one exists when something lies under it.
        return self.store.info(self.key).type == pafs.FileType.Directory or bool(self.store.list(self.key))

    def glob(self, pattern: str) -> Iterator[StorePath]:
        """Files under this folder matching `pattern` segment by segment (no `**`)."""
        wanted = pattern.split("/")
        prefix = self.key + "/" if self.key else ""
        for key, _ in self.store.list(self.key, recursive=len(wanted) > 1):
            parts = key.removeprefix(prefix).split("/")
            if len(parts) == len(wanted) and all(
                fnmatch.fnmatchcase(p, w) for p, w in zip(parts, wanted, strict=True)
            ):
                yield StorePath(self.store, key)

    # -- contents ------------------------------------------------------------
    def read_bytes(self) -> bytes:
        try:
            return self.store.read_bytes(self.key)
        except OSError as exc:
            if not self.exists():
                raise FileNotFoundError(str(self)) from exc
            raise

    def read_text(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return self.read_bytes().decode(encoding, errors)

    def open_input(self) -> Any:
        """A pyarrow input file (seekable): for hashing and Parquet footers."""
        with self.store.answering():
            return self.store.fs.open_input_file(self.store.full(self.key))

    def write_bytes(self, data: bytes) -> int:
        self.store.write_bytes_atomic(self.key, data)
        return len(data)

    def write_text(self, text: str, encoding: str = "utf-8") -> int:
        return self.write_bytes(text.encode(encoding))

    def unlink(self, missing_ok: bool = False) -> None:
        if not missing_ok and not self.exists():
            raise FileNotFoundError(str(self))
        self.store.delete(self.key)

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Nothing to make: object stores have no folders."""


StoreRoot = Path | StorePath


def open_store(
    value: str | os.PathLike[str], options: Mapping[str, Any] | None = None, key: str = "paths.store"
) -> StoreRoot:
    """A local Path for a plain path (or file://), a StorePath for any other URL pyarrow can open;
    `key` names the setting `value` came from in a message."""
    text = str(value)
    if not is_url(text):
        if options:
            raise StoreError("paths.store_options apply to URL stores (s3://...) only, not a local path")
        return Path(text.removeprefix("file://")) if text.startswith("file://") else Path(text)
    return StorePath(Store.open(text, options, key))


@contextlib.contextmanager
def local_copy_dir() -> Iterator[Path]:
    """A temp folder for files passed through on their way to or from a remote store."""
    with tempfile.TemporaryDirectory(prefix="lever-grid-store-") as folder:
        yield Path(folder)


def os_error_line(exc: BaseException) -> str:
    """An OSError (or a store's StoreError) as one line with no credentials: the store's own line for
    StoreUnreachable, else what failed and on which file (`No space left on device: results/x.html`)."""
    if isinstance(exc, OSError) and not isinstance(exc, StoreUnreachable) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        text = f"{exc.strerror}{where}"
    else:
        text = " ".join(str(exc).split())
    return redact(text)
