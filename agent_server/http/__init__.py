"""The HTTP plumbing both servers run on (the agent server and the gateway service): uvicorn behind
limits, tokens, browser origins, bounded bodies and the answers.
"""
