"""Push notifications: a task's updates POSTed to the webhooks its owner configured.

``settings.py`` the operator's knobs, ``hosts.py`` which webhook hosts the server may call
(no SSRF), ``configs.py`` the four config operations of one task, ``sender.py`` the delivery
(a bounded queue, in order per task, retried with backoff), ``extended_card.py`` the card an
authenticated caller may ask for.
"""
