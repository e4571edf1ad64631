"""The automatic configuration's stages."""
