"""Serving a checkpoint to the chat policy: the OpenAI-compatible server around a local checkpoint
(`app`, `webgym serve`) and the supervisor that (re)starts a server from the profile's command
template and waits until it answers (`supervisor`, used by the `serve` flow). Importing this
package does not import torch; `app` does.
"""
