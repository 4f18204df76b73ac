"""Certificates and keys for the local control plane.

One CA signs the API server's serving certificate and every client certificate; the
service-account signing key pair is separate, as on a real cluster.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = datetime.timedelta(days=7)


@dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path


def _write_key(path: Path, key) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    """A subject; Kubernetes reads CN as the user name and each O as one group."""
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


class CertificateAuthority:
    """A throw-away CA kept in a directory as ca.crt and ca.key, so later users can be issued."""

    def __init__(self, directory: Path, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey):
        self.directory = directory
        self.cert_path = directory / "ca.crt"
        self._cert = cert
        self._key = key

    @classmethod
    def create(cls, directory: Path) -> CertificateAuthority:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name("gpudirect-rdma-local-ca"))
            .issuer_name(_name("gpudirect-rdma-local-ca"))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .add_extension(
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
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "ca.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(directory / "ca.key", key)
        return cls(directory, cert, key)

    @classmethod
    def load(cls, directory: Path) -> CertificateAuthority:
        cert = x509.load_pem_x509_certificate((directory / "ca.crt").read_bytes())
        key = serialization.load_pem_private_key((directory / "ca.key").read_bytes(), None)
        return cls(directory, cert, key)

    def issue(
        self,
        stem: str,
        common_name: str,
        *,
        organizations: tuple[str, ...] = (),
        server: bool = False,
    ) -> KeyPair:
        """Write <stem>.crt and <stem>.key signed by this CA and return their paths."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name, organizations))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            # Python 3.13's ssl verifies strictly (VERIFY_X509_STRICT) and refuses a certificate
            # that does not name its issuer's key.
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self._cert.public_key()),
                critical=False,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.DNSName("localhost"),
                        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    ]
                ),
                critical=False,
            )
        cert = builder.sign(self._key, hashes.SHA256())
        pair = KeyPair(self.directory / f"{stem}.crt", self.directory / f"{stem}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(pair.key, key)
        return pair


def write_service_account_keys(directory: Path) -> KeyPair:
    """The service-account token signing pair: sa.key (private) and sa.pub (public)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pair = KeyPair(directory / "sa.pub", directory / "sa.key")
    _write_key(pair.key, key)
    pair.cert.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pair
