import { defineConfig } from '@spindle/runtime'

export default defineConfig({ app: './app.js' })
