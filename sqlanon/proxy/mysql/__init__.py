"""The MySQL front-end of the proxy: a hand-written server side of the MySQL protocol.

``codec`` (bytes only), ``auth`` (authentication state machine), ``gate`` (session statements
allowed besides queries), ``statements`` (prepared statements, bound values as literals),
``results`` (library results as result sets), ``backend`` (the proxy's connection to the
database and the relay of its result packets), ``session`` (one client's state machine),
``server`` (the listener and the transport, TLS included).
"""
