"""Pure builders of the Kubernetes objects the workloads components apply: plain dicts, no Pulumi resources.

They import neither Pulumi nor the components (tests/test_layout.py checks it); the components in workloads/ apply
what these build, and workloads/manifests/pod_fit.py sizes the same pods before anything is registered.
"""
