"""Helpers of the access tests: users and tokens, the real `gitstore serve`, certificates."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from gitstore.access.policy import AccessFile, parse_grants

__all__ = ["GITSTORE", "free_port", "isolated_env"]  # re-exported for the access tests
#: user -> grants. Passwords are `<user>-pw`; every user also gets one token.
USERS = {
    "reader": ["reader"],
    "writer": ["writer"],
    "admin": ["admin"],
    "secrets_only": ["secrets"],
    "reader1": ["reader:env:1"],
    "writer1": ["writer:env:1"],
    "reader9": ["reader:env:9"],
    "writer9": ["writer:env:9"],
    "admin9": ["admin:env:9"],
    "env_secrets": ["reader", "secrets:env:1"],
    "store_secrets": ["reader", "secrets"],
}


def password_of(user: str) -> str:
    return f"{user}-pw"


def add_users(root: Path, users: dict[str, list[str]] = USERS) -> dict[str, str]:
    """Create `users` in the access file of `root`; their tokens by user name."""
    access = AccessFile(root)
    for name, roles in users.items():
        access.add_user(name, parse_grants(roles), password_of(name))
    return {name: access.create_token(name, f"{name} tests")[1] for name in users}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def basic(user: str, password: str) -> dict[str, str]:
    pair = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {pair}"}


def gitstore(*args: str, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    """The real `gitstore` command."""
    return subprocess.run(
        [str(GITSTORE), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=isolated_env(home),
    )


@dataclass
class Server:
    url: str
    port: int
    process: subprocess.Popen
    log: Path

    def stop(self) -> None:
        stop_process(self.process)


def serve(
    root: Path,
    workdir: Path,
    *extra: str,
    verify: bool | str = True,
    scheme: str = "http",
    cert: tuple[str, str] | None = None,
) -> Server:
    """`gitstore serve --workers 2 --access-log` on a free port, waited for until it answers."""
    port = free_port()
    log = workdir / f"serve-{port}.log"
    args = [
        str(GITSTORE),
        "serve",
        "--root",
        str(root),
        "--port",
        str(port),
        "--workers",
        "2",
        "--access-log",
        *extra,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=isolated_env(workdir),
        )
    server = Server(f"{scheme}://127.0.0.1:{port}", port, process, log)
    wait_until_answers(
        process, server.url, log, probe="/api/v1/access/whoami", verify=verify, cert=cert
    )
    return server


@dataclass
class Certificates:
    """A private CA, a server certificate for 127.0.0.1/localhost and a client certificate."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _key_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _certificate(
    subject: str, key, issuer: x509.Name, issuer_key, *, ca: bool, extensions: list
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    for extension in extensions:
        builder = builder.add_extension(extension, critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_certificates(folder: Path) -> Certificates:
    """A self-signed CA and two certificates it signs, written as PEM files to `folder`."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gitstore test CA")])
    ca_cert = _certificate(
        "gitstore test CA",
        ca_key,
        ca_name,
        ca_key,
        ca=True,
        extensions=[
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            )
        ],
    )
    names = x509.SubjectAlternativeName(
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    )
    files = {}
    for role, extensions in (("server", [names]), ("client", [])):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = _certificate(
            f"gitstore test {role}", key, ca_cert.subject, ca_key, ca=False, extensions=extensions
        )
        files[f"{role}_cert"] = folder / f"{role}.pem"
        files[f"{role}_key"] = folder / f"{role}-key.pem"
        files[f"{role}_cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        files[f"{role}_key"].write_bytes(_key_pem(key))
    (folder / "ca.pem").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    return Certificates(ca=folder / "ca.pem", **files)
