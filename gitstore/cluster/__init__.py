"""A cluster member: a primary and replicas coordinated by etcd (docs/ha.md)."""
