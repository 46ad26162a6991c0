"""OpenAI swarm's bare-minimum example, as swarm code: one agent, one message, the answer printed.
The calls are the example's; with swarm the import line reads ``from swarm import Swarm, Agent``.
"""

from gateway import Agent, Swarm

client = Swarm()

agent = Agent(
    name="Agent",
    instructions="You are a helpful agent.",
)

messages = [{"role": "user", "content": "Hi!"}]
response = client.run(agent=agent, messages=messages)

print(response.messages[-1]["content"])
