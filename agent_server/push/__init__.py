"""Push notifications: a task's updates POSTed to the webhooks its owner configured.

``settings.py`` the operator's knobs, ``hosts.py`` which webhook hosts the server may call
(no SSRF), ``configs.py`` the four config operations on one task's webhooks, ``sender.py``
the delivery (a bounded queue, in order per task, retried with backoff).
"""
