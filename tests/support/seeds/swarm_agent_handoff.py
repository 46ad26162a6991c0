"""OpenAI swarm's agent-handoff example, as swarm code: a function that returns an agent, appended
to ``agent.functions`` after the agent was made. The agents and the function are the example's;
the wording is ours. With swarm the import line reads ``from swarm import Swarm, Agent``.
"""

from gateway import Agent, Swarm

client = Swarm()

english_agent = Agent(
    name="English Agent",
    instructions="You only speak English.",
)

spanish_agent = Agent(
    name="Spanish Agent",
    instructions="You only speak Spanish.",
)


def transfer_to_spanish_agent():
    """Transfer Spanish-speaking users at once."""
    return spanish_agent


english_agent.functions.append(transfer_to_spanish_agent)

messages = [{"role": "user", "content": "Hola. ¿Como estás?"}]
response = client.run(agent=english_agent, messages=messages)

print(response.messages[-1]["content"])
