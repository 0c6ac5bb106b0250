"""hostgate-vnc: the ``vnc`` relay for noVNC, VNC authentication done by the gateway."""
