"""OpenAI swarm's function-calling example, as swarm code: a function whose parameter has no type
(swarm describes it to the model as a string). The calls are the example's; the weather is ours.
With swarm the import line reads ``from swarm import Swarm, Agent``.
"""

from gateway import Agent, Swarm

client = Swarm()


def get_weather(location) -> str:
    return "{'temp':21, 'unit':'C'}"


agent = Agent(
    name="Agent",
    instructions="You are a helpful agent.",
    functions=[get_weather],
)

messages = [{"role": "user", "content": "What's the weather in NYC?"}]

response = client.run(agent=agent, messages=messages)
print(response.messages[-1]["content"])
