"""hostgate-ftp: ``ftp`` file management (FTP and explicit FTPS) over aioftp."""
