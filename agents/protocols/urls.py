"""What the protocols' routes share: the path of one version of one agent."""

VERSION = "agents/<str:agentId>/versions/<str:versionId>"
