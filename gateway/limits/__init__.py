"""Limits per token: a request rate and a spend cap, counted where every replica sees the same numbers.

``counters.py`` keeps counts per fixed window (in memory for one process, ``redis.py`` in
Redis for replicas); ``quotas.py`` reads a token's limits against them and says why a
request is refused; ``middleware.py`` refuses requests over a rate before any endpoint runs.
The spend is charged from the events a run records (gateway/recording/spend.py).
"""
