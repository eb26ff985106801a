"""The CDK app that deploys evalrunner: cdk.json runs ``python -m infra.app``."""
