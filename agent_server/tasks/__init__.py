"""The transport-free core of an agent server: the TaskManager, its runs (their phases and steps, one
writer per task), the task a send works on, what an agent's outputs become, and how followers are woken.
"""
