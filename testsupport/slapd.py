"""A real OpenLDAP ``slapd`` for tests: temp mdb database, known users, ldap:// and ldaps://.

``slapd_server`` (session scope) starts one server with

- suffix ``dc=example,dc=org``, service account ``cn=admin,dc=example,dc=org``;
- people under ``ou=people`` (``uid=alice``, ``uid=bob``, ``uid=carol``) with known passwords;
- groups under ``ou=groups`` (``cn=admins`` holds alice, ``cn=operators`` holds bob);
- ACLs that refuse anonymous searches, so the service bind is really needed;
- a plain listener (StartTLS offered) and an ``ldaps://`` listener whose certificate is
  signed by a throw-away CA (``ca_pem``) that no system trust store knows.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from testsupport.peers import free_port, launch, peer_unavailable, running, which
from testsupport.tlsca import make_server_cert

SUFFIX = "dc=example,dc=org"
ADMIN_DN = f"cn=admin,{SUFFIX}"
ADMIN_PASSWORD = "service-secret-123"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
USERS = {
    "alice": ("alice-password", "Alice Liddell", "alice@example.org"),
    "bob": ("bob-password", "Bob Builder", "bob@example.org"),
    "carol": ("carol-password", "Carol Danvers", "carol@example.org"),
}
GROUP_MEMBERS = {"admins": ["alice"], "operators": ["bob"]}
SCHEMA_DIR = Path("/etc/ldap/schema")
MODULE_DIRS = ("/usr/lib/ldap", "/usr/lib/openldap", "/usr/lib64/openldap")


@dataclass(frozen=True)
class SlapdServer:
    """Where the test directory listens and what it holds."""

    url: str
    ldaps_url: str
    suffix: str
    people: str
    groups: str
    bind_dn: str
    bind_password: str
    ca_pem: str
    users: dict[str, tuple[str, str, str]] = field(default_factory=dict)

    def user_dn(self, name: str) -> str:
        """The DN of one of the test people."""
        return f"uid={name},{self.people}"

    def group_dn(self, name: str) -> str:
        """The DN of one of the test groups."""
        return f"cn={name},{self.groups}"


def ssha(password: str) -> str:
    """An ``{SSHA}`` userPassword value."""
    salt = os.urandom(8)
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def _ldif() -> str:
    parts = [
        f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\n"
        "o: Example\n",
        f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people\n",
        f"dn: {GROUPS}\nobjectClass: organizationalUnit\nou: groups\n",
    ]
    for uid, (password, name, mail) in USERS.items():
        parts.append(
            f"dn: uid={uid},{PEOPLE}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {name}\n"
            f"sn: {name.split()[-1]}\nmail: {mail}\nuserPassword: {ssha(password)}\n"
        )
    for group, members in GROUP_MEMBERS.items():
        lines = "".join(f"member: uid={m},{PEOPLE}\n" for m in members)
        parts.append(f"dn: cn={group},{GROUPS}\nobjectClass: groupOfNames\ncn: {group}\n{lines}")
    return "\n".join(parts)


def _config(state: Path, tls_cert: Path, tls_key: Path, ca: Path, module_dir: str) -> str:
    schemas = "".join(
        f"include {SCHEMA_DIR / name}.schema\n" for name in ("core", "cosine", "inetorgperson")
    )
    return (
        f"{schemas}"
        f"pidfile {state / 'slapd.pid'}\n"
        f"argsfile {state / 'slapd.args'}\n"
        f"modulepath {module_dir}\n"
        "moduleload back_mdb\n"
        f"TLSCACertificateFile {ca}\n"
        f"TLSCertificateFile {tls_cert}\n"
        f"TLSCertificateKeyFile {tls_key}\n"
        "database mdb\n"
        "maxsize 10485760\n"
        f'suffix "{SUFFIX}"\n'
        f'rootdn "{ADMIN_DN}"\n'
        f"rootpw {ssha(ADMIN_PASSWORD)}\n"
        f"directory {state / 'db'}\n"
        "access to attrs=userPassword by anonymous auth by self write by * none\n"
        "access to * by users read by anonymous auth by * none\n"
    )


@pytest.fixture(scope="session")
def slapd_server() -> Iterator[SlapdServer]:
    """A running slapd with the test directory (see the module docstring)."""
    slapd = which("slapd", "/usr/sbin", "/usr/local/sbin")
    slapadd = which("slapadd", "/usr/sbin", "/usr/local/sbin")
    module_dir = next((d for d in MODULE_DIRS if Path(d, "back_mdb.so").exists()), None)
    if slapd is None or slapadd is None:
        peer_unavailable("slapd", "slapd/slapadd not installed (Debian package slapd)")
    if module_dir is None or not (SCHEMA_DIR / "inetorgperson.schema").exists():
        peer_unavailable("slapd", "OpenLDAP modules or schema files not found")
    state = Path(tempfile.mkdtemp(prefix="hostgate-slapd-"))
    try:
        (state / "db").mkdir()
        cert = make_server_cert(state / "tls", "hostgate slapd test CA")
        conf = state / "slapd.conf"
        conf.write_text(_config(state, cert.cert_path, cert.key_path, cert.ca_path, module_dir))
        data = state / "data.ldif"
        data.write_text(_ldif())
        loaded = subprocess.run(
            [slapadd, "-f", str(conf), "-l", str(data)], capture_output=True, timeout=60
        )
        if loaded.returncode != 0:
            peer_unavailable("slapd", f"slapadd failed: {loaded.stderr.decode(errors='replace')}")
        port, tls_port = free_port(), free_port()
        listeners = f"ldap://127.0.0.1:{port}/ ldaps://127.0.0.1:{tls_port}/"
        command = [slapd, "-f", str(conf), "-h", listeners, "-d", "0"]
        process = launch("slapd", command, state / "slapd.log", port, tls_port)
        with running(process):
            yield SlapdServer(
                url=f"ldap://127.0.0.1:{port}",
                ldaps_url=f"ldaps://127.0.0.1:{tls_port}",
                suffix=SUFFIX,
                people=PEOPLE,
                groups=GROUPS,
                bind_dn=ADMIN_DN,
                bind_password=ADMIN_PASSWORD,
                ca_pem=cert.ca_pem,
                users=dict(USERS),
            )
    finally:
        shutil.rmtree(state, ignore_errors=True)
