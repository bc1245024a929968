"""Signatures: who wrote a generation, in OpenSSH's SSHSIG format, with the keys people use for git.

- :mod:`~handoff_files.signing.wire`: SSH's wire encoding, read with bounds.
- :mod:`~handoff_files.signing.sshsig`: sign and verify (PROTOCOL.sshsig, Ed25519, namespace
  ``handoff-files``), armored as ``ssh-keygen -Y sign`` writes it.
- :mod:`~handoff_files.signing.keys`: an OpenSSH Ed25519 private key from a file, or a new one.
- :mod:`~handoff_files.signing.allowed`: who is trusted: an ``allowed_signers`` file in OpenSSH's format;
  :mod:`~handoff_files.signing.revoked`: the keys never trusted; :mod:`~handoff_files.signing.trustfile`:
  how both files are read (bounded, writable by their owner alone).

``cryptography`` (the primitives) is imported only when a key is loaded or a signature checked.
"""
