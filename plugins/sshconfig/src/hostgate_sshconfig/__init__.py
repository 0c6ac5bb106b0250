"""hostgate-sshconfig: connections from and to OpenSSH client configuration."""
