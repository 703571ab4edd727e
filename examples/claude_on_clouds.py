"""Claude on Vertex AI and Amazon Bedrock, a tool that asks the model to retry, remote MCP.

Runs offline against dive's Anthropic simulator, which serves the Vertex AI and Bedrock URL
shapes (Bedrock's stream in AWS event-stream frames) through the official SDK:
``uv run python examples/claude_on_clouds.py``. For the real platforms drop ``base_url`` and
the placeholder credentials: Vertex AI reads ``CLOUD_ML_REGION``,
``ANTHROPIC_VERTEX_PROJECT_ID`` and Application Default Credentials; Bedrock reads
``AWS_REGION`` and a Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``) or AWS credentials.
Nothing is read until the first request.
"""

from __future__ import annotations

import asyncio

from dive import Agent, ModelRetry, tool
from dive.llm import ModelSettings
from dive.providers.anthropic import AnthropicBedrockModel, AnthropicVertexModel
from dive.testing.anthropic import AnthropicSimulator

CITIES = {"Paris": "sunny", "Oslo": "snow"}


@tool(effect_type="read_only")
async def weather(city: str) -> str:
    """Today's weather in a city."""
    if city not in CITIES:
        raise ModelRetry(f"No station in {city!r}; try one of {', '.join(CITIES)}")
    return f"{CITIES[city]} in {city}"


async def main() -> None:
    with AnthropicSimulator() as sim:
        # Vertex AI: a tool call the tool asks to retry, the corrected call, the answer.
        sim.add(
            sim.tool_use("weather", {"city": "Lutetia"}),
            sim.tool_use("weather", {"city": "Paris"}),
            "It is sunny in Paris.",
        )
        vertex = AnthropicVertexModel(  # dive.model("anthropic-vertex:claude-sonnet-4-6", ...)
            "claude-sonnet-4-6",
            region="europe-west1",
            project_id="my-project",
            access_token="ya29.placeholder",
            base_url=sim.url,
        )
        result = await Agent(model=vertex, tools=[weather]).run("Weather in Lutetia?")
        print(f"vertex ({vertex.provider}): {result.output_text}")
        print(f"  sent to {sim.message_requests[0].path}")
        feedback = sim.message_requests[1]["messages"][-1]["content"][0]["content"][0]["text"]
        print(f"  the model was told: {feedback.splitlines()[0]}")
        await vertex.aclose()

        # Bedrock, with a remote MCP server in the settings: sent as Bedrock's body.
        sim.add("Oslo has snow.")
        bedrock = AnthropicBedrockModel(  # dive.model("anthropic-bedrock:anthropic.claude-…", ...)
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            aws_region="eu-north-1",
            api_key="bedrock-api-key-placeholder",
            base_url=sim.url,
        )
        servers = ({"name": "docs", "url": "https://mcp.example.com/mcp"},)
        agent = Agent(model=bedrock, model_settings=ModelSettings(mcp_servers=servers))
        result = await agent.run("Weather in Oslo?")
        print(f"bedrock ({bedrock.provider}): {result.output_text}")
        sent = sim.message_requests[-1]
        print(f"  sent to {sent.path} with MCP servers {[s['name'] for s in sent['mcp_servers']]}")
        await bedrock.aclose()


if __name__ == "__main__":
    asyncio.run(main())
