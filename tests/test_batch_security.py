"""Batch runs on a secured Dask cluster (#15): mutual TLS with certificates made here by openssl,
the security file's validation, the refusal of clients the cluster's CA did not certify, and the
warning on plain tcp:// scheduler addresses that other machines can reach.

Real parts only: a TLS LocalCluster on the loopback interface, real certificates, a real SQLite
file.  The configuration is small (24 candidates) to keep the module fast.
"""
from __future__ import annotations

import io
import math
import subprocess
from pathlib import Path

import pytest
import yaml

from graspsim import ModelError
from graspsim.batch import BatchError, read_results, run_batch
from graspsim.batch.security import insecure_address_warning, load_security

ROOT = Path(__file__).resolve().parent.parent
WORLD = str(ROOT / "worlds" / "barrett_mug.yaml")
TINY = {"batch": "tiny", "seed": 3, "world": WORLD, "hand": "barrett", "objects": ["mug"],
        "candidates": {"directions": {"sphere": 6, "list": [[0, 0, -1], [1, 0, 0]],
                                      "within": {"axis": [0, 0, -1], "angle": math.radians(95)}},
                       "rolls": 2, "standoffs": [0.0, 0.14]}}



def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, text=True)


def _ca(d: Path, name: str) -> None:
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}-key.pem", "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN=graspsim test {name}",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)


def _signed(d: Path, name: str, ca: str) -> None:
    (d / "ext.cnf").write_text("basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                               "extendedKeyUsage=serverAuth,clientAuth\n")
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
             f"{name}-key.pem", "-out", f"{name}.csr", "-subj", f"/CN=graspsim test {name}", cwd=d)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}-key.pem", "-CAcreateserial",
             "-out", f"{name}.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """The cluster's CA and one certificate it signed (scheduler, workers and client use it), plus
    another CA with a certificate of its own (an outsider)."""
    d = tmp_path_factory.mktemp("certs")
    _ca(d, "ca")
    _signed(d, "node", "ca")
    _ca(d, "rogue-ca")
    _signed(d, "rogue", "rogue-ca")
    return d


@pytest.fixture(scope="module")
def tls_cluster(certs):
    from distributed import LocalCluster
    from distributed.security import Security

    node, key = str(certs / "node.pem"), str(certs / "node-key.pem")
    sec = Security(require_encryption=True, tls_ca_file=str(certs / "ca.pem"), tls_scheduler_cert=node,
                   tls_scheduler_key=key, tls_worker_cert=node, tls_worker_key=key, tls_client_cert=node,
                   tls_client_key=key)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tls://", host="127.0.0.1",
                      security=sec, dashboard_address=None) as cl:
        yield cl


def _security_file(path: Path, certs: Path, **over) -> Path:
    data = {"ca_file": str(certs / "ca.pem"), "cert": str(certs / "node.pem"), "key": str(certs / "node-key.pem")}
    data.update(over)
    path.write_text(yaml.safe_dump({k: v for k, v in data.items() if v is not None}))
    return path


def test_tls_cluster_gives_the_same_table_as_the_local_run(certs, tls_cluster, tmp_path, capsys):
    from graspsim.cli import main

    addr = tls_cluster.scheduler_address
    assert addr.startswith("tls://127.0.0.1:")
    ref = tmp_path / "serial.sqlite"
    run_batch(TINY, ref, progress="off")
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(TINY))
    # the security file with paths relative to it
    sec = tmp_path / "security.yaml"
    sec.write_text(yaml.safe_dump({"ca_file": str(Path("..") / certs.name / "ca.pem"),
                                   "cert": str(certs / "node.pem"), "key": str(certs / "node-key.pem")}))
    assert Path(load_security(sec).tls_ca_file).resolve() == (certs / "ca.pem").resolve()
    db = tmp_path / "tls.sqlite"
    assert main(["batch", str(cfg), "--scheduler", addr, "--security", str(sec), "--db", str(db), "--chunk", "3",
                 "--progress", "off"]) == 0
    out, err = capsys.readouterr()
    assert "(Dask, 2 worker threads)" in out and "warning" not in err
    rows = read_results(db, timings=False)
    assert len(rows) == 24 and rows == read_results(ref, timings=False)


def test_clients_the_cluster_ca_did_not_certify_are_refused(certs, tls_cluster, tmp_path):
    """An outsider with a certificate of another CA cannot connect (so cannot run code), and the
    failed run leaves nothing behind."""
    import dask

    addr = tls_cluster.scheduler_address
    outsider = {"ca_file": str(certs / "ca.pem"), "cert": str(certs / "rogue.pem"),
                "key": str(certs / "rogue-key.pem")}
    db = tmp_path / "outsider.sqlite"
    with dask.config.set({"distributed.comm.timeouts.connect": "3s"}):
        with pytest.raises(BatchError, match=f"cannot connect to the Dask scheduler at '{addr}'.*same CA"):
            run_batch(TINY, db, scheduler=addr, security=outsider, progress="off")
    assert not db.exists() and not Path(f"{db}.lock").exists()
    # a plain client at the TLS port: the scheduler drops it
    with dask.config.set({"distributed.comm.timeouts.connect": "3s"}):
        with pytest.raises(BatchError, match="cannot connect to the Dask scheduler at 'tcp://"):
            run_batch(TINY, db, scheduler=addr.replace("tls://", "tcp://"), progress="off")
    assert not db.exists()
    # a TLS address without certificates, and certificates for a plain address: refused before
    # anything is created
    with pytest.raises(BatchError, match="uses TLS: give the client's certificates with --security FILE"):
        run_batch(TINY, db, scheduler=addr, progress="off")
    with pytest.raises(BatchError, match="--security is for a tls:// scheduler address"):
        run_batch(TINY, db, scheduler=addr.replace("tls://", "tcp://"), security=outsider, progress="off")
    assert not db.exists()


def test_security_file_errors_name_file_line_and_field(certs, tmp_path, capsys):
    from graspsim.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text(f"ca-file: {certs / 'ca.pem'}\ncert: {certs / 'node.pem'}\nkey: missing-key.pem\n")
    with pytest.raises(ModelError) as ei:
        load_security(bad)
    text = str(ei.value)
    assert f"{bad}:1: ca-file: unknown key 'ca-file' (did you mean 'ca_file'?)" in text
    assert f"{bad}:1: ca_file: missing required key 'ca_file'" in text
    assert f"{bad}:3: key: file 'missing-key.pem' not found ({tmp_path / 'missing-key.pem'})" in text
    notpem = tmp_path / "notpem.txt"
    notpem.write_text("hello\n")
    with pytest.raises(ModelError, match=rf"{_security_file(bad, certs, ca_file=str(notpem))}:\d: ca_file: "
                                         rf"'{notpem}' is not a PEM file"):
        load_security(bad)
    # a key that is not the certificate's
    _security_file(bad, certs, key=str(certs / "rogue-key.pem"))
    with pytest.raises(ModelError, match=rf"{bad}:\d: cert: the CA, certificate and key do not form a TLS context"):
        load_security(bad)
    # on the command line: exit 2 with the message, no database
    db = tmp_path / "x.sqlite"
    assert main(["batch", "--world", WORLD, "--direction", "0,0,-1", "--scheduler", "tls://127.0.0.1:8786",
                 "--security", str(bad), "--db", str(db)]) == 2
    assert "cert: the CA, certificate and key do not form a TLS context" in capsys.readouterr().err
    assert not db.exists()


def test_plain_tcp_address_off_this_machine_warns_once(tmp_path, capsys):
    import dask
    # distributed's configuration must exist before dask.config.set changes one of its keys: on exit
    # set() removes the keys that were new, and with them the whole 'distributed' tree that the
    # import inside run_batch filled in (the next test's Security() then raised KeyError)
    import distributed  # noqa: F401

    for address in ("tcp://127.0.0.1:8786", "tcp://localhost:8786", "tcp://[::1]:8786", "127.0.0.1:8786",
                    "tls://198.51.100.7:8786", "inproc://198.51.100.7/1/2"):
        buf = io.StringIO()
        assert insecure_address_warning(address, buf) is None and buf.getvalue() == "", address
    buf = io.StringIO()
    msg = insecure_address_warning("tcp://203.0.113.9:8786", buf)
    assert "'tcp://203.0.113.9:8786' is neither encrypted nor authenticated" in msg and "tls://" in msg
    assert insecure_address_warning("tcp://203.0.113.9:8786", buf) == msg and buf.getvalue() == msg + "\n"
    assert insecure_address_warning("203.0.113.9:8786", buf) is not None      # no scheme: tcp
    # through run_batch: the warning on stderr once, then the unreachable scheduler is an error that
    # names it, and no database is left behind (a name that never resolves: no network traffic)
    db, far = tmp_path / "far.sqlite", "tcp://graspsim-test.invalid:8786"
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(BatchError, match=f"cannot connect to the Dask scheduler at '{far}'.*is a Dask scheduler"):
            run_batch(TINY, db, scheduler=far, progress="off")
    err = capsys.readouterr().err
    assert err.count(f"warning: the Dask scheduler address '{far}' is neither encrypted") == 1
    assert not db.exists() and not Path(f"{db}.lock").exists()
    # a database with results keeps them when a resume cannot start; one emptied by --overwrite goes
    run_batch(TINY, db, limit=2, progress="off")
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(BatchError, match="cannot connect"):
            run_batch(TINY, db, scheduler=far, resume=True, progress="off")
        assert len(read_results(db)) == 2
        with pytest.raises(BatchError, match="cannot connect"):
            run_batch(TINY, db, scheduler=far, overwrite=True, progress="off")
    assert not db.exists()
