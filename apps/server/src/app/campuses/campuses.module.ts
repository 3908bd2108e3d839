import { Module } from '@nestjs/common';
import { CampusService } from './campus.service.js';

@Module({ providers: [CampusService], exports: [CampusService] })
export class CampusesModule {}
