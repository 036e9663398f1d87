"""hiera-eyaml's PKCS7 values: `ENC[PKCS7,<base64 CMS enveloped-data>]` (docs/secrets.md#eyaml).

eyaml encrypts with `OpenSSL::PKCS7.encrypt` to the certificate `eyaml createkeys` writes
(`public_key.pkcs7.pem`) and decrypts with its private key (`private_key.pkcs7.pem`);
`cryptography`'s PKCS7 functions read and write the same DER. A value may be written on one line
or as a folded block (`>` with the base64 wrapped), so whitespace inside the brackets is ignored.
No I/O: callers hand the keys' bytes in.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs7

from gitstore.errors import InvalidInput

PREFIX = "ENC[PKCS7,"
_VALUE = re.compile(r"\s*ENC\[PKCS7,([A-Za-z0-9+/=\s]*)\]\s*", re.DOTALL)
#: An eyaml value of another encryptor (`ENC[GPG,...]`): named, never taken for plain text.
_OTHER = re.compile(r"\s*ENC\[[A-Za-z0-9_]+,", re.DOTALL)
#: Larger than any secret a configuration holds; bounds the base64 decoded.
MAX_VALUE_BYTES = 1 << 20


@dataclass(frozen=True)
class EyamlKeys:
    """A team's eyaml key pair: the certificate always, the private key to decrypt."""

    certificate: x509.Certificate
    private_key: object | None = None

    @classmethod
    def load(cls, public_pem: bytes, private_pem: bytes | None = None) -> EyamlKeys:
        """Keys from PEM bytes; InvalidInput naming which one does not load."""
        try:
            certificate = x509.load_pem_x509_certificate(public_pem)
        except ValueError as exc:
            raise InvalidInput(
                "the eyaml public key is not a PEM certificate (eyaml createkeys writes "
                "public_key.pkcs7.pem)",
                key="eyaml-public-key",
            ) from exc
        key = None
        if private_pem is not None:
            try:
                key = serialization.load_pem_private_key(private_pem, None)
            except (ValueError, TypeError) as exc:
                raise InvalidInput(
                    "the eyaml private key is not an unencrypted PEM private key",
                    key="eyaml-private-key",
                ) from exc
        return cls(certificate, key)


def is_encrypted(value: object) -> bool:
    """Whether `value` is an eyaml value of any encryptor (`ENC[PKCS7,...]`, `ENC[GPG,...]`)."""
    return isinstance(value, str) and _OTHER.match(value) is not None


def decrypt(value: str, keys: EyamlKeys) -> str:
    """The plain text of eyaml value `value`; ValueError saying why it cannot be read."""
    match = _VALUE.fullmatch(value)
    if match is None:
        raise ValueError("not an ENC[PKCS7,...] value (only the PKCS7 encryptor is supported)")
    if keys.private_key is None:
        raise ValueError("no eyaml private key was given")
    text = re.sub(r"\s+", "", match.group(1))
    if len(text) > MAX_VALUE_BYTES * 4 // 3 + 4:
        raise ValueError(f"the value is larger than {MAX_VALUE_BYTES} bytes")
    try:
        der = base64.b64decode(text, validate=True)
        plain = pkcs7.pkcs7_decrypt_der(der, keys.certificate, keys.private_key, [])  # type: ignore[arg-type]
    except (binascii.Error, ValueError) as exc:
        raise ValueError(
            "it does not decrypt with this key pair (made with another eyaml public key, or "
            "damaged)"
        ) from exc
    try:
        return plain.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError("its plain text is not UTF-8") from exc


def encrypt(plain: str, keys: EyamlKeys) -> str:
    """`plain` as a one-line eyaml value for the holder of `keys`' private key."""
    der = (
        pkcs7.PKCS7EnvelopeBuilder()
        .set_data(plain.encode("utf-8"))
        .add_recipient(keys.certificate)
        .encrypt(serialization.Encoding.DER, [])
    )
    return f"{PREFIX}{base64.b64encode(der).decode('ascii')}]"
