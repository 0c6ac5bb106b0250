"""hostgate-sshd: the SSH front door (OpenSSH clients in, asyncssh server side)."""
