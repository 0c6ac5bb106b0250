// Where OpenSSH keeps a server's host key of an algorithm, to compare fingerprints with
// `ssh-keygen -lf <file>` on the server (pure, for Vitest).

/** The public key file of a host-key algorithm, or null for one OpenSSH has no file name for. */
export function hostKeyFile(algorithm: string): string | null {
  const kind = /ed25519/.test(algorithm)
    ? "ed25519"
    : /^ecdsa-/.test(algorithm)
      ? "ecdsa"
      : /rsa/.test(algorithm)
        ? "rsa"
        : null;
  return kind ? `/etc/ssh/ssh_host_${kind}_key.pub` : null;
}
