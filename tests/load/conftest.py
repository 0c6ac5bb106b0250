from testsupport.sshd import sshd  # noqa: F401
