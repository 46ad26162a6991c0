"""The two seed examples this project follows, written against their own APIs: only the import line is Switchboard's."""
