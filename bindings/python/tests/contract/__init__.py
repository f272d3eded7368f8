"""The live contract comparison (tests/test_contract.py): the same requests to our worker and to
upstream's own (tasker-py 0.1.8), each answer reduced to comparable facts (`shape`), the REST and
gRPC requests (`rest`, `grpc_probe`), and the README's list of deliberate differences (`differences`)."""
