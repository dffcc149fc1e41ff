"""The bridge on a NATS that wants TLS and a login, as a floor's production NATS does.

A real nats-server with a certificate from a test CA, client certificates required and a
user with a password; the bridge reaches it only through ``[nats]``'s ``user`` /
``password_file`` and ``[nats.tls]``. A wrong password is one clear line and a non-zero
exit (systemd restarts it), never a traceback or a bridge that looks up but stores nothing.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bench.floor.harness import BIN, Floor, run, verify
from bench.floor.natsd import available
from bridge.config import load
from daemon.runtime.config import ConfigError

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


def _cert(
    name: str, issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None, *, ca: bool = False
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    iname, ikey = issuer if issuer else (subject, key)
    now = datetime.datetime.now(datetime.UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(iname)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        b = b.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return b.sign(ikey, hashes.SHA256()), key


def _write(folder: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey):
    (folder / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    k = folder / f"{name}-key.pem"
    k.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    k.chmod(0o600)


def _pki(folder: Path) -> Path:
    folder.mkdir(parents=True)
    ca, ca_key = _cert("floor test CA", None, ca=True)
    _write(folder, "ca", ca, ca_key)
    for name in ("server", "bridge"):
        c, k = _cert(name, (ca.subject, ca_key))
        _write(folder, name, c, k)
    pw = folder / "nats.password"
    pw.write_text("correct horse\n")
    pw.chmod(0o600)
    return folder


def _floor(tmp_path: Path, password: str, ca: str = "ca.pem") -> Floor:
    pki = _pki(tmp_path / "pki")
    other, other_key = _cert("someone else's CA", None, ca=True)
    _write(pki, "other-ca", other, other_key)
    wrong = tmp_path / "pki" / "wrong.password"
    wrong.write_text(password + "\n")
    wrong.chmod(0o600)
    conf = f"""
tls {{
  cert_file: "{pki / "server.pem"}"
  key_file: "{pki / "server-key.pem"}"
  ca_file: "{pki / "ca.pem"}"
  verify: true
}}
authorization {{
  user: bridge
  password: "correct horse"
}}
"""
    lines = [
        "connect_timeout = 20",
        'user = "bridge"',
        f'password_file = "{wrong}"',
        "",
        "[nats.tls]",
        f'ca = "{pki / ca}"',
        f'cert = "{pki / "bridge.pem"}"',
        f'key = "{pki / "bridge-key.pem"}"',
    ]
    return Floor(tmp_path / "floor", real=0, fake=2, interval=0.1, nats_conf=conf, nats_lines=lines)


def _client_tls(pki: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    ctx.load_cert_chain(str(pki / "bridge.pem"), str(pki / "bridge-key.pem"))
    return ctx


def test_the_bridge_stores_through_tls_with_a_client_certificate_and_a_password(tmp_path):
    f = _floor(tmp_path, "correct horse")
    try:
        f.start()
        assert f.nats is not None and f.nats.url.startswith("tls://")
        f.start_bridge()
        pki = tmp_path / "pki"
        counts = run(
            verify(
                f.nats.url,
                f.heads(),
                timeout=60,
                tls=_client_tls(pki),
                user="bridge",
                password="correct horse",
            )
        )
        assert set(counts) == {"lg-001", "lg-002"} and all(n > 0 for n in counts.values())
    finally:
        f.close()


@pytest.mark.parametrize(
    ("password", "ca", "why"),
    [
        ("battery staple", "ca.pem", "Authorization Violation"),
        ("correct horse", "other-ca.pem", "CERTIFICATE_VERIFY_FAILED"),
    ],
    ids=["wrong-password", "untrusted-server"],
)
def test_a_refused_login_is_one_line_and_a_failed_start(tmp_path, password, ca, why):
    f = _floor(tmp_path, password, ca)
    try:
        f.start()
        r = subprocess.run(
            [str(BIN / "tabled-bridge"), "--config", str(f.bridge_config)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 1, r.stdout + r.stderr
        out = r.stdout + r.stderr
        assert "Traceback" not in out, out
        lines = [json.loads(x) for x in r.stdout.splitlines()]  # every line JSON (journald)
        last = lines[-1]
        assert last["level"] == "error" and last["priority"] == 3, last
        assert last["event"].startswith("cannot connect to NATS tls://127.0.0.1:"), last
        assert why in last["event"] and "tried for" not in last["event"], last
    finally:
        f.close()


def test_login_and_tls_keys_are_checked_with_the_file_and_the_key(tmp_path):
    pki = _pki(tmp_path / "pki")
    (pki / "open.password").write_text("x\n")
    (pki / "open.password").chmod(0o644)
    p = tmp_path / "bridge.toml"
    table = '[[tables]]\nid = "t1"\npublish = "tcp://x:1"\nreplay = "tcp://x:2"\n'
    cases = {
        'user = "b"\n': "nats.user: needs nats.password_file too",
        f'user = "b"\npassword_file = "{pki / "open.password"}"\n': "nats.password_file: "
        "secret key file",
        f'creds = "{pki / "ca.pem"}"\ntoken_file = "{pki / "nats.password"}"\n': "nats: creds "
        "and token_file both given",
        'nkey_seed = "nope.nk"\n': "nats.nkey_seed: no such file 'nope.nk'",
        f'[nats.tls]\ncert = "{pki / "bridge.pem"}"\n': "nats.tls: cert and key go together",
        '[nats.tls]\nca = "missing.pem"\n': "nats.tls.ca: no such file",
        "[nats.tls]\nverify = false\n": "nats.tls: Object contains unknown field `verify`",
    }
    for lines, want in cases.items():
        p.write_text("[nats]\n" + lines + table)
        with pytest.raises(ConfigError) as e:
            load(p)
        assert f"bridge.toml: {want}" in str(e.value), (lines, str(e.value))
