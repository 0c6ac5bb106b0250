"""hostgate-ssh: the ``ssh`` terminal and ``sftp`` files over asyncssh."""
