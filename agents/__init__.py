"""agents: plan -> execute -> verify. Repository analysis, environment setup, test configuration,
execution and verification, each with typed (pydantic) inputs and outputs."""
