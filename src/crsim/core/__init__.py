"""What every floor may use: errors, plug-ins, files, secrets, seeding, interrupts, progress."""
