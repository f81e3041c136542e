"""Securing the connection to a Dask cluster.

Whoever can reach a Dask scheduler can run code on its workers.  A plain ``tcp://`` address is
unauthenticated and unencrypted, so :func:`insecure_address_warning` warns (once per address) when
one points anywhere but this machine.  A ``tls://`` address uses mutual TLS through
``distributed.security.Security``: the client, the scheduler and the workers each show a
certificate signed by the cluster's CA, and refuse peers that cannot.

The client's certificates come from a small YAML file (``--security FILE``)::

    ca_file: certs/ca.pem        # the cluster's certificate authority (PEM)
    cert: certs/client.pem       # this client's certificate, signed by that CA (PEM)
    key: certs/client-key.pem    # its private key (PEM; leave out when the cert file holds it)

(paths relative to the file), from a dict with the same keys or a ``Security`` object (Python
API), or else from Dask's own configuration (``distributed.comm.tls.ca-file``,
``distributed.comm.tls.client.cert``/``key``).
"""
from __future__ import annotations

import ipaddress
import socket
import ssl
import sys
from pathlib import Path

from ..errors import ModelError
from ..model.fields import Reader
from ..model.yamlio import YMap, load_yaml
from .config import BatchError, _ymap

__all__ = ["load_security", "scheduler_security", "insecure_address_warning", "SECURITY_KEYS"]

SECURITY_KEYS = ["ca_file", "cert", "key"]
_SECURE_SCHEMES = ("tls", "wss")
_warned: set = set()


def _split(address: str) -> tuple[str, str]:
    """(scheme, host) of a Dask address; no scheme means tcp."""
    scheme, _, rest = address.rpartition("://")
    scheme = scheme or "tcp"
    host = rest
    if host.startswith("["):                          # [::1]:8786
        host = host[1:host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.split(":")[0]
    return scheme.lower(), host


def _is_loopback(host: str) -> bool:
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addrs = {i[4][0] for i in infos}
    return bool(addrs) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs)


def insecure_address_warning(address: str, stream=None) -> str | None:
    """Warn on ``stream`` (stderr) that ``address`` is a plain, reachable scheduler address: once
    per address and process.  Returns the warning (also when it was already given), or None for a
    TLS address, an in-process one, or one on this machine's loopback interface."""
    scheme, host = _split(address)
    if scheme in _SECURE_SCHEMES or scheme == "inproc" or _is_loopback(host):
        return None
    msg = (f"warning: the Dask scheduler address '{address}' is neither encrypted nor authenticated: anyone who "
           "can reach it can run code on the cluster's workers.  Use a tls:// address with --security FILE "
           "(see docs/batch.md, 'A secure cluster'), or keep the cluster on a trusted network")
    if address not in _warned:
        _warned.add(address)
        print(msg, file=stream if stream is not None else sys.stderr, flush=True)
    return msg


def load_security(source):
    """A ``distributed.security.Security`` for a client from ``source``: a YAML file (path), a dict
    ``{ca_file, cert, key}`` or a ``Security`` (returned as it is).  The files must exist and form a
    usable TLS context; otherwise a :class:`graspsim.ModelError` names the file, field and problem."""
    from distributed.security import Security

    if isinstance(source, Security):
        return source
    if isinstance(source, dict) and not isinstance(source, YMap):
        data, file, base = _ymap(source), "<security dict>", Path(".").resolve()
    else:
        path = Path(source)
        data, file, base = load_yaml(path), str(path), path.resolve().parent
    r = Reader(file)
    m = r.mapping(data, "", getattr(data, "line", 1))
    r.raise_if_errors()
    r.check_keys(m, "", SECURITY_KEYS, required=["ca_file", "cert"])
    paths = {}
    for key in SECURITY_KEYS:
        v = r.string(m, key, "")
        if v is None:
            continue
        p = Path(v).expanduser()
        p = p if p.is_absolute() else base / p
        if not p.is_file():
            r.error(m.line_of(key), key, f"file '{v}' not found ({p})")
            continue
        try:
            head = p.read_text(encoding="ascii", errors="replace")
        except OSError as e:
            r.error(m.line_of(key), key, f"cannot read '{p}': {e}")
            continue
        if "-----BEGIN" not in head:
            r.error(m.line_of(key), key, f"'{p}' is not a PEM file (no '-----BEGIN' line)")
            continue
        paths[key] = str(p)
    r.raise_if_errors()
    sec = Security(require_encryption=True, tls_ca_file=paths["ca_file"], tls_client_cert=paths["cert"],
                   tls_client_key=paths.get("key"))
    try:
        sec.get_connection_args("client")        # loads the CA, the certificate and the key now
    except (ssl.SSLError, OSError, ValueError) as e:
        raise ModelError(f"the CA, certificate and key do not form a TLS context: {e} (is 'key' the private key "
                         "of 'cert', and are all three PEM files?)", file=file, line=getattr(m, "line", None),
                         field="cert") from None
    return sec


def scheduler_security(address: str, security=None):
    """The ``Security`` to connect to ``address`` with (None for a plain address), or a
    :class:`BatchError` saying what is missing or contradictory."""
    from distributed.security import Security

    scheme, _ = _split(address)
    if scheme in _SECURE_SCHEMES:
        if security is not None:
            return load_security(security)
        sec = Security()                          # Dask's configuration (distributed.comm.tls.*)
        if sec.tls_ca_file and sec.tls_client_cert:
            return sec
        raise BatchError(f"the scheduler address '{address}' uses TLS: give the client's certificates with "
                         "--security FILE (a YAML file with ca_file, cert and key; see docs/batch.md) or in Dask's "
                         "configuration (distributed.comm.tls.ca-file, distributed.comm.tls.client.cert/key)")
    if security is not None:
        raise BatchError(f"--security is for a tls:// scheduler address; '{address}' is {scheme}:// (start the "
                         "scheduler with TLS and give its tls:// address)")
    return None
