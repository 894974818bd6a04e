#!/usr/bin/env bash
# Placeholder until the engine build lands: builds nothing yet.
exit 0
