"""hostgate-rdp: the ``rdp`` relay, an RDCleanPath proxy for IronRDP browser clients."""
