"""What a run leaves behind: the event schema (``events.py``), the recorder that appends a run's
events, and what is read back from them (``usage.py``, ``summary.py``).
"""
