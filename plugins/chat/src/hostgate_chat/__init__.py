"""hostgate-chat: the ``telegram``, ``slack`` and ``webhook`` notification channels."""
