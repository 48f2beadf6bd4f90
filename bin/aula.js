#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader, so `aula` works from a checkout without a build step.
import { register } from 'tsx/esm/api';
register();
await import('../src/server/cli/main.ts');
