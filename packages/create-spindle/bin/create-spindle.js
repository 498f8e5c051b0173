#!/usr/bin/env node
// Committed launcher, so package managers can link the bin before dist/ is built.
import '../dist/cli.js'
