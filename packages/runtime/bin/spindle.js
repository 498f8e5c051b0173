#!/usr/bin/env node
// Committed launcher, so package managers can link the `spindle` bin before dist/ is built.
import '../dist/cli.js'
