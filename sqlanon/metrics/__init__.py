"""Information-loss metrics: how good a release is. Never imports anonymize/."""
