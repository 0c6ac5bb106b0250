from testsupport.sshd import private_sshd, sshd  # noqa: F401
