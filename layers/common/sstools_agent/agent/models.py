"""Chat model providers, chosen by configuration: standin (default, not an LLM), bedrock, openai."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from sstools_agent.adapters.aws_session import aws_session
from sstools_agent.settings import ModelSettings


def build_chat_model(
    settings: ModelSettings, *, bedrock_client: Any = None, router: Any = None
) -> BaseChatModel:
    """The configured model; `bedrock_client` replaces the boto3 client (tests stub one);
    `router` is the agent's tool router, whose ranking the stand-in follows.

    Provider packages (and the stand-in) are imported only when chosen: each costs
    cold-start time.
    """
    if settings.model_provider == "bedrock":
        from langchain_aws import ChatBedrockConverse  # noqa: PLC0415

        # Made here rather than by langchain-aws, so that a SnapStart restore reaches their
        # connection pools (`adapters.aws_session`).
        session = aws_session(settings.aws_region)
        return ChatBedrockConverse(
            model_id=settings.bedrock_model_id,
            region_name=settings.aws_region,
            client=bedrock_client or session.client("bedrock-runtime"),
            bedrock_client=session.client("bedrock"),
            max_tokens=settings.model_max_tokens,
            temperature=0,
        )
    if settings.model_provider == "openai":
        from langchain_openai import ChatOpenAI  # noqa: PLC0415

        return ChatOpenAI(
            model=settings.openai_model,
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key,
            timeout=settings.model_timeout_s,
            max_retries=1,
            max_completion_tokens=settings.model_max_tokens,
            temperature=0,
            streaming=True,
        )
    from sstools_agent.agent.standin_model import StandinChatModel  # noqa: PLC0415

    return StandinChatModel(router=router, token_delay_s=settings.standin_token_delay_s)
