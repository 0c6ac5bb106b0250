"""hostgate-smb: ``smb`` file management over smbprotocol."""
