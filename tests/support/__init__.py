"""What the tests share: servers on loopback and their ports, waits, fakes, test agents and recorded payloads."""
