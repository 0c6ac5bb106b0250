"""hostgate-web: the browser app, served at ``/`` by the gateway itself."""
