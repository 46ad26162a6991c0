"""OpenAI swarm's context-variables example, as swarm code: instructions rendered from the context
variables, and a function that reads them through its ``context_variables`` parameter. The agent,
function and variables are the example's; the wording is ours. With swarm the import line reads
``from swarm import Swarm, Agent``.
"""

from gateway import Agent, Swarm

client = Swarm()


def instructions(context_variables):
    name = context_variables.get("name", "User")
    return f"You are a helpful agent. Greet the user by name ({name})."


def print_account_details(context_variables: dict):
    user_id = context_variables.get("user_id")
    name = context_variables.get("name")
    print(f"Account details: {name} {user_id}")
    return "Success"


agent = Agent(
    name="Agent",
    instructions=instructions,
    functions=[print_account_details],
)

context_variables = {"name": "James", "user_id": 123}

response = client.run(
    messages=[{"role": "user", "content": "Hi!"}],
    agent=agent,
    context_variables=context_variables,
)
print(response.messages[-1]["content"])

response = client.run(
    messages=[{"role": "user", "content": "Print my account details!"}],
    agent=agent,
    context_variables=context_variables,
)
print(response.messages[-1]["content"])
