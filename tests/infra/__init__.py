"""CDK assertions, cdk-nag and cfn-lint on the synthesised stack; the GPU task; routing."""
